"""Chess served as an OpenEnv environment."""
