"""wss:// servers (a Hugging Face Space, a server behind a TLS proxy): the client's socket
never blocks, and TLS may hold decrypted bytes that ``poll(2)`` does not see, or want to read
before it writes; the episodes are the local env's, frame for frame, messages larger than
one TLS record (16 KB) included."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import threading
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import uvicorn

import openenv_gym
from tests.conftest import free_port, wait_until

x509 = pytest.importorskip("cryptography.x509")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402


class Frames(gym.Env):
    """96x96x3 uint8 frames (27 KB: two TLS records each), drawn from the env's seeded generator."""

    observation_space = gym.spaces.Box(0, 255, (96, 96, 3), np.uint8)
    action_space = gym.spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self._frame(), {}

    def step(self, action):
        return self._frame(), float(action), False, False, {}

    def _frame(self):
        return self.np_random.integers(0, 256, (96, 96, 3), dtype=np.uint8)


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for localhost and 127.0.0.1, signed by its own key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert, key_file = directory / "cert.pem", directory / "key.pem"
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert, key_file


@pytest.fixture(scope="module")
def tls_url(tmp_path_factory) -> Iterator[str]:
    """An openenv-gym server of :class:`Frames` behind TLS on 127.0.0.1, trusted by this
    process (``SSL_CERT_FILE``, which the client's default context reads)."""
    cert, key = self_signed(tmp_path_factory.mktemp("tls"))
    port = free_port()
    app = openenv_gym.create_app(Frames)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off",
                       ssl_certfile=str(cert), ssl_keyfile=str(key))
    )
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    thread = threading.Thread(target=server.run, daemon=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SSL_CERT_FILE", str(cert))
        thread.start()
        try:
            assert wait_until(lambda: server.started, 30), "the TLS server did not start"
            yield f"https://localhost:{port}"
        finally:
            server.should_exit = True
            thread.join(10)
            with contextlib.suppress(Exception):
                if thread.is_alive():
                    server.force_exit = True
                    thread.join(5)


def local_frames(seed: int, steps: int) -> list[np.ndarray]:
    env = Frames()
    frames = [env.reset(seed=seed)[0]]
    frames += [env.step(i % 3)[0] for i in range(steps)]
    return frames


@pytest.mark.parametrize("encoding", ["msgpack", "json"])
def test_an_episode_over_tls_is_the_local_one(tls_url, encoding):
    env = openenv_gym.RemoteEnv(tls_url, encoding=encoding, message_timeout=30)
    try:
        assert env._session.url.startswith("wss://")  # never the native listener's plain socket
        frames = [env.reset(seed=3)[0]]
        frames += [env.step(i % 3)[0] for i in range(20)]
    finally:
        env.close()
    np.testing.assert_array_equal(np.stack(frames), np.stack(local_frames(3, 20)))


def test_a_vector_env_over_tls_steps_batches_larger_than_a_record(tls_url):
    envs = openenv_gym.RemoteVectorEnv(tls_url, 4, mode="batched", message_timeout=30)
    try:
        obs, _ = envs.reset(seed=[0, 1, 2, 3])
        for _ in range(5):
            obs, rewards, *_ = envs.step(np.array([2, 2, 2, 2]))
    finally:
        envs.close()
    assert obs.shape == (4, 96, 96, 3) and rewards.tolist() == [2.0] * 4
    for i in range(4):
        np.testing.assert_array_equal(obs[i], local_frames(i, 5)[-1])
