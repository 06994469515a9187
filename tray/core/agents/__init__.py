"""Pure: agents that speak no OSC 7501, read through rules (one TOML file an agent)."""
