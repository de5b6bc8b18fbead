"""Structured outputs on TT: vLLM's grammar bitmask is applied to the logits on the host before sampling, so output
is valid by construction (JSON schema, regex, choice), in a batch next to an unconstrained request."""

import json
import re

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
