"""Connect Four as an OpenEnv server: one call to openenv-gym.

    uvicorn server.app:app --host 0.0.0.0 --port 8000     # or: python -m server.app

``web=True`` serves the page at ``/web/`` (play the env by hand, watch it render), as a Hugging
Face Space of an OpenEnv package shows upstream's.
"""

import openenv_gym

app = openenv_gym.create_app("pettingzoo.classic.connect_four_v3", web=True)


def main() -> None:
    """Serve on 0.0.0.0:8000 (the port of an OpenEnv container / Hugging Face Space)."""
    import uvicorn

    uvicorn.run(app, host="0.0.0.0", port=8000)


if __name__ == "__main__":
    main()
