"""Tic-Tac-Toe served as an OpenEnv environment."""
