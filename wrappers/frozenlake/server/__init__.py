"""FrozenLake served as an OpenEnv environment."""
