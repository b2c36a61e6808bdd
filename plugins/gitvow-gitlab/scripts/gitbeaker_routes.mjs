// Record the REST routes @gitbeaker/core calls, by calling every method of every resource
// class it exports (map.json names the classes; inherited methods of the generic Resource*
// bases are found on the prototype chain) against a requester that records instead of sending. Run by derive_inventory.py
// in a scratch directory where @gitbeaker/core is installed; prints JSON lines
// {"method", "path", "name"} on stdout, one per distinct (method, path, name).
import { createRequire } from 'node:module';
import * as Core from '@gitbeaker/core';

const require = createRequire(import.meta.url);
const map = require('@gitbeaker/core/map.json');

// Arguments become ZZnameZZ: encodeURIComponent leaves it alone, so it survives into the
// path, where the Python side turns it back into :name.
const placeholder = (name) => `ZZ${name}ZZ`;
// Options that choose a URL (projectId vs groupId vs userId ...): one call per discriminator.
const DISCRIMINATORS = ['projectId', 'groupId', 'userId', 'resourceId', 'environmentId', 'clusterId',
  'mergerequestIId', 'issueIId', 'epicIId', 'snippetId', 'commitId', 'tagName', 'jobId', 'pipelineId',
  'keyId', 'fingerprint', 'runnerId', 'token', 'tokenId', 'newName'];
// Arguments that are uploads: an object with content and filename, not a string.
const FILES = new Set(['metricImage', 'packageFile', 'file', 'avatar', 'content', 'chart']);
const upload = (name) => ({ content: new Blob(['x']), filename: placeholder(`${name}Filename`) });

const seen = new Set();
const recorded = new Set();
let current = '';
const record = (method) => async (endpoint) => {
  const key = `${method} ${endpoint} ${current}`;
  recorded.add(current);
  if (!seen.has(key)) {
    seen.add(key);
    process.stdout.write(JSON.stringify({ method, path: String(endpoint), name: current, prefix: lastPrefix }) + '\n');
  }
  return { body: {}, headers: {}, status: 200 };
};
let lastPrefix = '';
const requesterFn = (resourceOptions) => {
  return {
    get: record('GET'), post: record('POST'), put: record('PUT'), patch: record('PATCH'), delete: record('DELETE'),
  };
};

// Positional parameter names of a method, read from its source: everything before the
// options bag (a parameter called options, or a destructured object).
function parameters(fn) {
  const text = fn.toString();
  const open = text.indexOf('(');
  let depth = 0;
  let close = open;
  for (let i = open; i < text.length; i += 1) {
    if ('({['.includes(text[i])) depth += 1;
    if (')}]'.includes(text[i])) depth -= 1;
    if (depth === 0) { close = i; break; }
  }
  const names = [];
  for (const raw of text.slice(open + 1, close).split(',')) {
    const name = raw.trim().split('=')[0].trim();
    if (!/^\w+$/.test(name) || name === 'options') break;
    names.push(name);
  }
  return names;
}

function methodsOf(instance) {
  const found = new Map();
  for (let proto = Object.getPrototypeOf(instance); proto && proto.constructor.name !== 'BaseResource';
    proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name === 'constructor' || found.has(name) || typeof proto[name] !== 'function') continue;
      found.set(name, parameters(proto[name]));
    }
  }
  return found;
}

for (const [resource, listed] of Object.entries(map)) {
  const Cls = Core[resource];
  if (typeof Cls !== 'function') continue;
  let instance;
  try {
    instance = new Cls({ token: 't', host: 'https://gitlab.invalid', requesterFn });
  } catch (e) {
    process.stderr.write(`skip ${resource}: ${e}\n`);
    continue;
  }
  // prefixUrl is the part of this.url after /api/v4/.
  lastPrefix = String(instance.url).split('/api/v4/')[1] ?? '';
  const methods = methodsOf(instance);
  for (const { name, args } of listed) methods.set(name, args);
  for (const [name, args] of methods) {
    current = `${resource}.${name}`;
    const plain = args.map(placeholder);
    const withFiles = args.map((a) => (FILES.has(a) ? upload(a) : placeholder(a)));
    const argLists = args.some((a) => FILES.has(a)) ? [plain, withFiles] : [plain];
    const variants = [{}];
    for (const d of DISCRIMINATORS) if (!args.includes(d)) variants.push({ [d]: placeholder(d) });
    for (const positional of argLists) {
      for (const options of variants) {
        try {
          await instance[name](...positional, options);
        } catch (e) {
          // A method that needs other arguments than these; what it recorded before failing counts.
        }
      }
    }
    if (!recorded.has(current)) process.stderr.write(`no route recorded for ${current}\n`);
  }
}
