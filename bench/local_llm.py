"""Speed of the bundled local model (docs/local-llm.md) on this machine: prompt processing and generation
tokens/s as llama.cpp's server measures them (`timings` in each reply), with the load average alongside,
since on a shared machine the numbers are only as good as it is idle. Needs the local-llm extra and model.

    .venv/bin/python -m bench.local_llm [--threads N] [--runs 3] [--max-tokens 128]
"""

from __future__ import annotations

import argparse
import os
import statistics

import httpx

from green_agent.llm.local import LocalLLMSettings, model_path, start_server

PROMPT = [
    {"role": "system", "content": "You are a customer of an online store. Order #W2378156 arrived broken."},
    {"role": "user", "content": "Hi! How can I help you today?"},
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=LocalLLMSettings().threads)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args()
    settings = LocalLLMSettings(threads=args.threads, parallel=1, context_tokens=2048, max_tokens=512)
    server = start_server(settings, model_path())
    prompt_rates, generation_rates = [], []
    print(f"load average before: {os.getloadavg()[0]:.2f}; threads {args.threads}")
    for run in range(args.runs):
        # Each run changes the prompt's start, so no run is served from the previous one's prompt cache.
        messages = [{**PROMPT[0], "content": f"({run}) {PROMPT[0]['content']}"}, PROMPT[1]]
        body = {"model": server.model, "messages": messages, "max_tokens": args.max_tokens}
        reply = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=600).json()
        timings = reply["timings"]
        prompt_rates.append(timings["prompt_per_second"])
        generation_rates.append(timings["predicted_per_second"])
        print(
            f"run {run}: prompt {timings['prompt_n']} tokens at {timings['prompt_per_second']:.1f} tok/s, "
            f"generated {timings['predicted_n']} at {timings['predicted_per_second']:.1f} tok/s"
        )
    print(
        f"median: prompt {statistics.median(prompt_rates):.1f} tok/s, "
        f"generation {statistics.median(generation_rates):.1f} tok/s; "
        f"load average after: {os.getloadavg()[0]:.2f}"
    )
    server.stop()


if __name__ == "__main__":
    main()
