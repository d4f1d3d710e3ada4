"""DashFloat: a full-screen terminal coding agent for OpenAI-compatible endpoints."""

__version__ = "0.1.0"
