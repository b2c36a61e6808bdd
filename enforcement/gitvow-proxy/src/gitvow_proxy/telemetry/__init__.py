"""Decision telemetry beyond the audit file: OpenTelemetry export."""
