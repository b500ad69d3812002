"""Plain helpers with no avdnn imports above them: core counts, URL and secret redaction, a recency-bounded dict."""
