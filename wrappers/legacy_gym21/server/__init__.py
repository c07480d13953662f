"""Legacy Gym 0.21 env served as an OpenEnv environment."""
