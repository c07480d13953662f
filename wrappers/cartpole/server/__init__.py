"""CartPole served as an OpenEnv environment."""
