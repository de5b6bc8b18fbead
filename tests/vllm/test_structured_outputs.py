"""Structured outputs on TT: vLLM's grammar bitmask is applied to the logits on the host before sampling, so output
is valid by construction (JSON schema, JSON object, regex, choice, grammar), in a batch next to an unconstrained
request, and under load."""

import json
import re

import jsonschema
from vllm import SamplingParams
from vllm.sampling_params import StructuredOutputsParams

SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                           "population": {"type": "integer"}},
          "required": ["city", "population"], "additionalProperties": False}


def test_grammars_constrain_output(llm):
    prompts = ["Give the largest city of France as JSON:", "A US phone number:", "Is the sky blue? Answer:",
               "The capital of France is"]
    params = [
        SamplingParams(temperature=0, max_tokens=40, structured_outputs=StructuredOutputsParams(json=SCHEMA)),
        SamplingParams(temperature=0.8, seed=3, max_tokens=20,
                       structured_outputs=StructuredOutputsParams(regex=r"\(\d{3}\) \d{3}-\d{4}")),
        SamplingParams(temperature=0, max_tokens=5, structured_outputs=StructuredOutputsParams(choice=["yes", "no"])),
        SamplingParams(temperature=0, max_tokens=6),
    ]
    js, phone, choice, free = (o.outputs[0].text for o in llm.generate(prompts, params))
    data = json.loads(js)
    assert set(data) == {"city", "population"} and isinstance(data["population"], int) and len(data["city"]) <= 12
    assert re.fullmatch(r"\(\d{3}\) \d{3}-\d{4}", phone), phone
    assert choice in ("yes", "no")
    # The unconstrained request in the same batch is untouched: the same text as alone.
    alone = llm.generate([prompts[3]], params[3])[0].outputs[0].text
    assert free == alone


# Bounded, so a sampled output always completes within max_tokens (an unbounded integer can run on for ever).
BOUNDED = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                            "country": {"enum": ["FR", "DE", "IT", "ES"]},
                                            "rank": {"type": "integer", "minimum": 1, "maximum": 99}},
           "required": ["city", "country", "rank"], "additionalProperties": False}
GRAMMAR = """
root ::= "(" num (op num)* ")"
num ::= [1-9] [0-9]?
op ::= " + " | " * "
"""
GRAMMAR_RE = r"\([1-9][0-9]?(?: [+*] [1-9][0-9]?)*\)"


def test_every_constrained_request_is_valid_under_load(llm):
    """30 requests at once through an engine of 4 decode slots: six each of JSON schema, JSON object, regex,
    choice and an EBNF grammar, sampled at temperature 0.8 with their own seeds (so the outputs differ and the
    masks are exercised beyond the greedy path), queued, admitted and finished while others decode. Every output
    must parse and validate, and each request must have stopped by its grammar, not by max_tokens."""
    kinds = {
        "schema": (StructuredOutputsParams(json=BOUNDED), "Describe a city as JSON:"),
        "object": (StructuredOutputsParams(json_object=True),
                   'A JSON object with a name and an age: {"name": "Ann", "age": 31}\nAnother one:'),
        "regex": (StructuredOutputsParams(regex=r"\(\d{3}\) \d{3}-\d{4}"), "Call me at"),
        "choice": (StructuredOutputsParams(choice=["red", "green", "blue"]), "My favourite colour is"),
        "grammar": (StructuredOutputsParams(grammar=GRAMMAR), "An arithmetic expression:"),
    }
    requests = [(kind, seed) for seed in range(6) for kind in kinds]
    outs = llm.generate([kinds[k][1] for k, _ in requests],
                        [SamplingParams(temperature=0.8, seed=seed, max_tokens=100, structured_outputs=kinds[k][0])
                         for k, seed in requests])
    texts = {}
    for (kind, seed), out in zip(requests, outs, strict=True):
        text, reason = out.outputs[0].text, out.outputs[0].finish_reason
        assert reason == "stop", (kind, seed, reason, text)
        if kind == "schema":
            jsonschema.validate(json.loads(text), BOUNDED)
        elif kind == "object":
            assert isinstance(json.loads(text), dict), text
        elif kind == "regex":
            assert re.fullmatch(r"\(\d{3}\) \d{3}-\d{4}", text), text
        elif kind == "choice":
            assert text in ("red", "green", "blue"), text
        else:
            assert re.fullmatch(GRAMMAR_RE, text), text
        texts.setdefault(kind, set()).add(text)
    # Sampled, not all alike: the seeds give several distinct valid outputs per kind (the choice has three).
    assert all(len(v) >= 2 for v in texts.values()), texts
