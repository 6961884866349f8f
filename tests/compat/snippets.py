"""Code as openai-python's README and helpers.md show it (written for these tests), run unchanged with openai and
with holysheep: only the import lines (`IMPORTS`) differ. Each snippet prints what its user would look at; the
test compares the two outputs. ``BASE_URL`` and ``API_KEY`` are given (the README reads them from the environment).
"""

from __future__ import annotations

IMPORTS = {
    "openai": "import openai\nfrom openai import AsyncOpenAI, OpenAI\n",
    "holysheep": "import holysheep as openai\nfrom holysheep import AsyncOpenAI, OpenAI\n",
}

SNIPPETS: dict[str, str] = {}

SNIPPETS["chat_create"] = """
client = OpenAI(base_url=BASE_URL, api_key=API_KEY)
completion = client.chat.completions.create(
    model="gpt-4o",
    messages=[
        {"role": "developer", "content": "Talk like a pirate."},
        {"role": "user", "content": "How do I check if a Python object is an instance of a class?"},
    ],
)
print(completion.choices[0].message.content)
print(completion.choices[0].finish_reason, completion.usage.total_tokens, completion.object)
print(completion.service_tier, completion.choices[0].message.annotations, completion.choices[0].message.audio)
print(completion._request_id.startswith("req_"))
"""

SNIPPETS["chat_stream"] = """
client = OpenAI(base_url=BASE_URL, api_key=API_KEY)
stream = client.chat.completions.create(
    model="gpt-4o",
    messages=[{"role": "user", "content": "Say this is a test"}],
    stream=True,
)
for chunk in stream:
    if chunk.choices:
        print(chunk.choices[0].delta.content or "", end="")
print()
"""

SNIPPETS["async_create"] = """
import asyncio

client = AsyncOpenAI(base_url=BASE_URL, api_key=API_KEY)


async def main() -> None:
    completion = await client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "Say this is a test"}])
    print(completion.choices[0].message.content)


asyncio.run(main())
"""

SNIPPETS["async_stream"] = """
import asyncio

client = AsyncOpenAI(base_url=BASE_URL, api_key=API_KEY)


async def main() -> None:
    stream = await client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "Say this is a test"}], stream=True)
    async for chunk in stream:
        if chunk.choices:
            print(chunk.choices[0].delta.content or "", end="")
    print()


asyncio.run(main())
"""

SNIPPETS["stream_helper"] = """
client = OpenAI(base_url=BASE_URL, api_key=API_KEY)
with client.chat.completions.stream(
    model="gpt-4o",
    messages=[{"role": "user", "content": "Tell me a story in five words"}],
) as stream:
    for event in stream:
        if event.type == "content.delta":
            print(event.delta, flush=True, end="")
        elif event.type == "content.done":
            print()
            print("done:", event.content)
completion = stream.get_final_completion()
print(completion.choices[0].message.content, completion.system_fingerprint, completion.choices[0].finish_reason)
"""

SNIPPETS["parse_pydantic"] = """
from pydantic import BaseModel


class Step(BaseModel):
    explanation: str
    output: str


class MathResponse(BaseModel):
    steps: list[Step]
    final_answer: str


client = OpenAI(base_url=BASE_URL, api_key=API_KEY)
completion = client.chat.completions.parse(
    model="gpt-4o-2024-08-06",
    messages=[
        {"role": "system", "content": "You are a helpful math tutor."},
        {"role": "user", "content": "solve 8x + 31 = 2"},
    ],
    response_format=MathResponse,
)
message = completion.choices[0].message
if message.parsed:
    print(message.parsed.steps)
    print("answer: ", message.parsed.final_answer)
else:
    print(message.refusal)
"""

SNIPPETS["parse_refusal"] = """
from pydantic import BaseModel


class MathResponse(BaseModel):
    final_answer: str


client = OpenAI(base_url=BASE_URL, api_key=API_KEY)
completion = client.chat.completions.parse(
    model="gpt-4o-2024-08-06",
    messages=[{"role": "user", "content": "please refuse this"}],
    response_format=MathResponse,
)
message = completion.choices[0].message
if message.parsed:
    print("answer: ", message.parsed.final_answer)
else:
    print("refused:", message.refusal)
"""

SNIPPETS["parse_tools"] = """
from enum import Enum

from pydantic import BaseModel


class Table(str, Enum):
    orders = "orders"
    customers = "customers"


class Query(BaseModel):
    table_name: Table
    columns: list[str]
    limit: int


client = OpenAI(base_url=BASE_URL, api_key=API_KEY)
completion = client.chat.completions.parse(
    model="gpt-4o-2024-08-06",
    messages=[
        {"role": "system", "content": "You are a helpful assistant. Use the supplied tools."},
        {"role": "user", "content": "look up all my orders in may of last year that were fulfilled"},
    ],
    tools=[openai.pydantic_function_tool(Query)],
)
tool_call = (completion.choices[0].message.tool_calls or [])[0]
print(tool_call.function.name)
print(tool_call.function.parsed_arguments)
print(completion.choices[0].finish_reason)
"""

SNIPPETS["tools_create"] = """
import json

client = OpenAI(base_url=BASE_URL, api_key=API_KEY)
tools = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}]
messages = [{"role": "user", "content": "What's the weather in Paris?"}]
completion = client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools)
message = completion.choices[0].message
call = message.tool_calls[0]
print(call.type, call.function.name, json.loads(call.function.arguments), message.content, message.function_call)
messages += [message, {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 22 C"}]
final = client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools)
print(final.choices[0].message.content)
"""

SNIPPETS["stream_helper_tools"] = """
client = OpenAI(base_url=BASE_URL, api_key=API_KEY)
tools = [{"type": "function", "function": {"name": "get_weather", "strict": True, "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
    "additionalProperties": False}}}]
with client.chat.completions.stream(
    model="gpt-4o", messages=[{"role": "user", "content": "Weather in Oslo?"}], tools=tools,
) as stream:
    for event in stream:
        if event.type == "tool_calls.function.arguments.done":
            print(event.name, event.arguments, event.parsed_arguments)
final = stream.get_final_completion()
print(repr(final.choices[0].message.content), final.choices[0].finish_reason)
"""

SNIPPETS["embeddings"] = """
client = OpenAI(base_url=BASE_URL, api_key=API_KEY)
response = client.embeddings.create(model="text-embedding-3-small", input=["The food was delicious", "Hello"])
print(len(response.data), len(response.data[0].embedding), [d.index for d in response.data])
print([round(x, 6) for x in response.data[1].embedding[:4]], response.usage.prompt_tokens, response.model)
"""

SNIPPETS["models"] = """
client = OpenAI(base_url=BASE_URL, api_key=API_KEY)
for model in client.models.list():
    print(model.id, model.owned_by)
page = client.models.list()
print(len(page.data), page.data[0].object, page.has_next_page())
print(client.models.retrieve("gpt-4.1").id)
"""

SNIPPETS["with_raw_response"] = """
client = OpenAI(base_url=BASE_URL, api_key=API_KEY)
response = client.chat.completions.with_raw_response.create(
    messages=[{"role": "user", "content": "Say this is a test"}],
    model="gpt-4o",
)
print(response.headers.get("content-type"), response.status_code, response.http_response.status_code)
print(response.headers.get("x-request-id").startswith("req_"))
completion = response.parse()  # get the object that `chat.completions.create()` would have returned
print(completion.choices[0].message.content)
"""

SNIPPETS["with_streaming_response"] = """
import json

client = OpenAI(base_url=BASE_URL, api_key=API_KEY)
with client.chat.completions.with_streaming_response.create(
    messages=[{"role": "user", "content": "Say this is a test"}],
    model="gpt-4o",
) as response:
    print(response.headers.get("content-type"))
    body = "".join(line for line in response.iter_lines())
print(json.loads(body)["choices"][0]["message"]["content"])
"""

SNIPPETS["timeouts"] = """
import httpx2

client = OpenAI(base_url=BASE_URL, api_key=API_KEY, timeout=20.0)
print(client.with_options(timeout=5.0).chat.completions.create(
    messages=[{"role": "user", "content": "How can I list all files in a directory using Python?"}],
    model="gpt-4o",
).choices[0].message.content)
client = OpenAI(base_url=BASE_URL, api_key=API_KEY, timeout=httpx2.Timeout(60.0, read=5.0, write=10.0, connect=2.0))
print(client.chat.completions.create(
    messages=[{"role": "user", "content": "again"}], model="gpt-4o", timeout=httpx2.Timeout(30.0),
).choices[0].message.content)
"""

SNIPPETS["retries"] = """
client = OpenAI(base_url=BASE_URL, api_key=API_KEY, max_retries=0)
try:
    client.chat.completions.create(messages=[{"role": "user", "content": "first"}], model="gpt-4o")
except openai.RateLimitError as e:
    print("rate limited:", e.status_code)
completion = client.with_options(max_retries=5).chat.completions.create(
    messages=[{"role": "user", "content": "When was the Python programming language created?"}],
    model="gpt-4o",
)
print(completion.choices[0].message.content)
"""

SNIPPETS["errors"] = """
client = OpenAI(base_url=BASE_URL, api_key=API_KEY, max_retries=0)
try:
    client.chat.completions.create(messages=[{"role": "user", "content": "hi"}], model="no-such-model")
except openai.APIConnectionError as e:
    print("The server could not be reached")
except openai.RateLimitError as e:
    print("A 429 status code was received; we should back off a bit.")
except openai.APIStatusError as e:
    print("Another non-200-range status code was received")
    print(type(e).__name__, e.status_code, e.response.status_code)
    print(e.code, e.type, e.param, e.body["message"])
    print(e.request_id.startswith("req_"))
try:
    OpenAI(base_url="http://127.0.0.1:9/v1", api_key=API_KEY, max_retries=0).models.list()
except openai.APIConnectionError as e:
    print("The server could not be reached:", type(e).__name__)
"""

SNIPPETS["http_client"] = """
import httpx2

client = OpenAI(
    base_url=BASE_URL,
    api_key=API_KEY,
    http_client=httpx2.Client(headers={"x-app": "snippets"}),
)
print(client.chat.completions.create(messages=[{"role": "user", "content": "through httpx2"}], model="gpt-4o")
      .choices[0].message.content)
print(client.with_options(max_retries=1).models.retrieve("gpt-4.1").id)
"""

SNIPPETS["async_http_client"] = """
import asyncio

import httpx2


async def main() -> None:
    async with AsyncOpenAI(base_url=BASE_URL, api_key=API_KEY, http_client=httpx2.AsyncClient()) as client:
        completion = await client.chat.completions.create(
            messages=[{"role": "user", "content": "async through httpx2"}], model="gpt-4o")
        print(completion.choices[0].message.content)
        print(client.is_closed())
    print(client.is_closed())


asyncio.run(main())
"""

SNIPPETS["with_options_copy"] = """
client = OpenAI(base_url=BASE_URL, api_key=API_KEY)
other = client.copy(default_query={"api-version": "2024-10-21"}, default_headers={"x-team": "a"})
print(other.chat.completions.create(messages=[{"role": "user", "content": "copied"}], model="gpt-4o")
      .choices[0].message.content)
print(other.api_key == client.api_key, other.with_options(api_key="sk-other0123456789abcd").api_key)
"""
