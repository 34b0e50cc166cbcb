"""Talking to name servers and brokers: typed client, fan-out to every server, route pump, collect."""
