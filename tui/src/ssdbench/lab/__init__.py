"""Many benches, one lab: results to an S3-compatible or HTTP/WebDAV store, live status,
the fleet view (docs/lab.md)."""
