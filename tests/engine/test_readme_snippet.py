"""The Python snippet in green_agent's docstring (copied into the README) runs as written."""

from __future__ import annotations

import asyncio
import contextlib
import io
import textwrap

import green_agent


def _snippet() -> str:
    doc = green_agent.__doc__ or ""
    start = doc.index("    import asyncio")
    end = doc.index("    asyncio.run(main())") + len("    asyncio.run(main())")
    return textwrap.dedent(doc[start:end])


async def test_docstring_snippet_runs() -> None:
    code = _snippet().replace("asyncio.run(main())", "")
    namespace: dict[str, object] = {}
    exec(compile(code, "green_agent.__doc__", "exec"), namespace)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        await namespace["main"]()  # type: ignore[operator]
    assert out.getvalue().strip() == "{1: 1.0, 2: 1.0} 1.0 {'user_stop': 10}"
    assert "asyncio.run(main())" in _snippet()
    assert asyncio.iscoroutinefunction(namespace["main"])
