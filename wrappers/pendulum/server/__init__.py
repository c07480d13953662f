"""Pendulum served as an OpenEnv environment."""
