"""A user module typed with openai-python's types (a weather tool loop, JSON mode and a JSON schema). The test
type-checks it with `mypy --strict` as it is, and again with only the import lines pointed at holysheep."""

from __future__ import annotations

import json

from openai import OpenAI
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionAssistantMessageParam,
    ChatCompletionMessageParam,
    ChatCompletionMessageToolCallParam,
    ChatCompletionToolMessageParam,
    ChatCompletionToolParam,
    completion_create_params,
)
from openai.types.shared_params import FunctionDefinition, ResponseFormatJSONObject, ResponseFormatJSONSchema

WEATHER: FunctionDefinition = {"name": "get_weather", "description": "The weather in a city", "strict": True,
                               "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                              "required": ["city"], "additionalProperties": False}}
TOOLS: list[ChatCompletionToolParam] = [{"type": "function", "function": WEATHER}]
AS_JSON: completion_create_params.ResponseFormat = ResponseFormatJSONObject(type="json_object")
CITY: ResponseFormatJSONSchema = {"type": "json_schema", "json_schema": {
    "name": "city", "strict": True, "schema": {"type": "object", "properties": {"name": {"type": "string"}}}}}


def ask(client: OpenAI, question: str) -> str:
    messages: list[ChatCompletionMessageParam] = [{"role": "system", "content": "Be brief."},
                                                  {"role": "user", "content": question}]
    completion: ChatCompletion = client.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS,
                                                                tool_choice="auto", temperature=0.2)
    message = completion.choices[0].message
    calls: list[ChatCompletionMessageToolCallParam] = []
    results: list[ChatCompletionToolMessageParam] = []
    for call in message.tool_calls or []:
        if call.type == "function":
            city = json.loads(call.function.arguments).get("city", "?")
            calls.append({"id": call.id, "type": "function",
                          "function": {"name": call.function.name, "arguments": call.function.arguments}})
            results.append({"role": "tool", "tool_call_id": call.id, "content": f"Sunny in {city}"})
    assistant: ChatCompletionAssistantMessageParam = {"role": "assistant", "content": message.content,
                                                      "tool_calls": calls}
    messages += [assistant, *results]
    final = client.chat.completions.create(model="gpt-4o", messages=messages, response_format=AS_JSON)
    usage = final.usage
    structured = client.chat.completions.create(model="gpt-4o", messages=messages, response_format=CITY, seed=1)
    total = (usage.total_tokens if usage else 0) + (structured.usage.total_tokens if structured.usage else 0)
    return f"{final.choices[0].message.content} {structured.choices[0].finish_reason} {total}"
