"""Scenario rendering (upstream's str(task.user_scenario)) and the tool schemas."""

from __future__ import annotations

import hashlib
from typing import Any

from retail_domain import TOOL_SCHEMAS, RetailData, StructuredInstructions, UserScenario

from .conftest import load_vectors

# sha256 of "\n\x00".join(str(task.user_scenario) for all 114 tasks), computed with upstream's
# UserScenario/StructuredUserInstructions classes (tau2-bench v1.0.1) over the same tasks.json.
ALL_SCENARIOS_SHA256 = "83aacad9e659810514da450856dce4d98904178f5106a8878a24c73786139bf6"


def test_all_scenarios_render_exactly_like_upstream(data: RetailData) -> None:
    joined = "\n\x00".join(task.scenario_text() for task in data.tasks.values())
    assert hashlib.sha256(joined.encode()).hexdigest() == ALL_SCENARIOS_SHA256


def test_scenario_layout() -> None:
    # Expected value produced by upstream's classes for the same input.
    scenario = UserScenario(
        persona="P1\n\n  \nP2",
        instructions=StructuredInstructions(
            domain="retail",
            reason_for_call="a\n\nb\n \t\nc",
            known_info=None,
            unknown_info="u",
            task_instructions="t\n",
        ),
    )
    assert scenario.render() == (
        "Persona:\n\tP1\n\n  \n\tP2\nInstructions:\n\tDomain: retail\n\tReason for call:\n"
        "\t\ta\n\n\t\tb\n \t\n\t\tc\n\tUnknown info:\n\t\tu\n\tTask instructions:\n\t\tt\n"
    )


def test_task_1_scenario(data: RetailData) -> None:
    text = data.tasks["1"].scenario_text()
    assert text.startswith(
        "Instructions:\n\tDomain: retail\n\tReason for call:\n\t\tYou received your order #W2378156"
    )
    assert "\n\tKnown info:\n\t\tYou are Yusuf Rossi in zip code 19122.\n\tUnknown info:\n\t\t" in text
    assert text.endswith(
        "\n\tTask instructions:\n\t\tYou are detail-oriented and want to make sure everything is "
        "addressed in one go."
    )


def test_null_unknown_info_is_omitted(data: RetailData) -> None:
    task = data.tasks["10"]
    assert isinstance(task.user_scenario.instructions, StructuredInstructions)
    assert task.user_scenario.instructions.unknown_info is None
    assert "Unknown info:" not in task.scenario_text()


def test_schemas_match_upstream_signatures() -> None:
    signatures: list[dict[str, Any]] = load_vectors("tool_signatures.json")
    assert [s["function"]["name"] for s in TOOL_SCHEMAS] == [s["name"] for s in signatures]
    for schema, expected in zip(TOOL_SCHEMAS, signatures, strict=True):
        assert schema["type"] == "function"
        function = schema["function"]
        params = function["parameters"]
        assert params["type"] == "object" and params["title"] == "parameters"
        assert list(params["properties"]) == list(expected["parameters"])
        for name, prop in params["properties"].items():
            assert {k: v for k, v in prop.items() if k in ("type", "items")} == expected["parameters"][name]
            assert prop["description"] and prop["title"]
        if expected["required"]:
            assert params["required"] == expected["required"]
        else:
            assert "required" not in params  # upstream emits no required key for a parameterless tool
        assert "additionalProperties" not in params and "strict" not in function
        assert function["description"]


def test_schema_titles_and_key_facts() -> None:
    by_name = {s["function"]["name"]: s["function"] for s in TOOL_SCHEMAS}
    props = by_name["modify_pending_order_address"]["parameters"]["properties"]
    assert props["order_id"]["title"] == "Order Id" and props["address1"]["title"] == "Address1"
    assert "#" in props["order_id"]["description"]
    reason = by_name["cancel_pending_order"]["parameters"]["properties"]["reason"]["description"]
    assert "'no longer needed'" in reason and "'ordered by mistake'" in reason


def test_parameter_objects_have_upstreams_generated_shape() -> None:
    """Rebuild each parameters object the way upstream does (a pydantic model titled 'parameters') from our
    descriptions, and compare the serialized form, key order included."""
    import json

    from pydantic import Field, create_model

    for schema in TOOL_SCHEMAS:
        props = schema["function"]["parameters"]["properties"]
        fields: dict[str, Any] = {
            name: (list[str] if prop["type"] == "array" else str, Field(description=prop["description"]))
            for name, prop in props.items()
        }
        model = create_model("parameters", **fields)
        assert json.dumps(schema["function"]["parameters"]) == json.dumps(model.model_json_schema())
