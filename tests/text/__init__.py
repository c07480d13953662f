"""Tests of the text views (:mod:`openenv_gym.text`)."""

import gymnasium as gym

#: Taxi's id: v4 from Gymnasium 1.3, v3 before (the oldest supported, 1.2, has only v3).
TAXI = "Taxi-v4" if "Taxi-v4" in gym.registry else "Taxi-v3"
