"""Adapters that ship with the core, registered through the entry-point group like any plugin."""
