"""Connect Four served as an OpenEnv environment."""
