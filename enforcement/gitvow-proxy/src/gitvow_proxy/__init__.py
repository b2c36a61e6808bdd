"""The proxy: the hard boundary. Importing this package imports nothing heavy; mitmproxy loads with ``addon``."""
