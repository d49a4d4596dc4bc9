"""Plugins: hook specifications, the plugin manager and the plugin kinds as protocols."""
