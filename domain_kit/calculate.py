"""The arithmetic behind the ``calculate`` tool that several tau2 domains share.

Upstream evaluates the expression with Python's ``eval`` and no builtins, after checking its characters; the
result and every error message (syntax errors included) are Python's. This evaluates the same way, with one
difference a remote agent cannot exploit: huge integer powers and products are refused before they are
computed (see `_MAX_INT_BITS`).
"""

from __future__ import annotations

import ast
import warnings
from typing import Any

# calculate() evaluates Python arithmetic like upstream, but a remote agent could otherwise send 9**9**9**9
# and stall the worker: integer results beyond this many bits raise the error upstream would reach (the
# float() conversion overflows long before this size). Within the float range the result is unchanged.
_MAX_INT_BITS = 1 << 16


def _too_big(value: Any) -> bool:
    return isinstance(value, int) and value.bit_length() > _MAX_INT_BITS


def _guarded_pow(base: Any, exponent: Any) -> Any:
    if (
        isinstance(base, int)
        and isinstance(exponent, int)
        and exponent > 0
        and abs(base) > 1
        and (abs(base).bit_length() - 1) * exponent > _MAX_INT_BITS
    ):
        raise OverflowError("int too large to convert to float")
    result = base**exponent
    if _too_big(result):
        raise OverflowError("int too large to convert to float")
    return result


def _guarded_mul(left: Any, right: Any) -> Any:
    if (
        isinstance(left, int)
        and isinstance(right, int)
        and left.bit_length() + right.bit_length() > _MAX_INT_BITS
    ):
        raise OverflowError("int too large to convert to float")
    return left * right


class _GuardArithmetic(ast.NodeTransformer):
    """Route ** and * through the size guards; everything else is left to Python as upstream's eval does."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        guard = {ast.Pow: "_pow", ast.Mult: "_mul"}.get(type(node.op))
        if guard is None:
            return node
        call = ast.Call(func=ast.Name(id=guard, ctx=ast.Load()), args=[node.left, node.right], keywords=[])
        return ast.copy_location(call, node)


def evaluate(expression: str) -> Any:
    """Evaluate an arithmetic expression as upstream's ``eval(expression, {"__builtins__": None}, {})`` does
    (same result, same error text), with integer sizes bounded."""
    if not isinstance(expression, str):  # a list of one-character strings gets past the character check
        raise TypeError("eval() arg 1 must be a string, bytes or code object")
    # Same parse as eval(str): leading spaces and tabs are ignored; syntax errors carry the same message.
    source = expression.lstrip(" \t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(source, filename="<string>", mode="eval")
        guarded = ast.fix_missing_locations(_GuardArithmetic().visit(tree))
        code = compile(guarded, "<string>", "eval")
    scope = {"__builtins__": None, "_pow": _guarded_pow, "_mul": _guarded_mul}
    return eval(code, scope, {})


def calculate(expression: Any) -> str:
    """Upstream's ``calculate`` tool (retail and airline have the same one): only the characters
    ``0123456789+-*/(). `` are allowed, and the result is the float rounded to 2 decimals, as a string."""
    if not all(char in "0123456789+-*/(). " for char in expression):
        raise ValueError("Invalid characters in expression")
    return str(round(float(evaluate(expression)), 2))
