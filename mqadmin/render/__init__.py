"""Showing results: command answers as tables/JSON/YAML, diff-namesrv output, the monitor's metrics."""
