# NOT_GIVEN and omit, as frameworks (openai-agents, pydantic-ai) pass them for what they leave out.
from openai import NOT_GIVEN, OpenAI, omit

client = OpenAI()
completion = client.chat.completions.create(
    model="gpt-4o",
    messages=[{"role": "user", "content": "Nothing else"}],
    temperature=NOT_GIVEN,
    tools=omit,
    tool_choice=omit,
    stream=omit,
    max_tokens=NOT_GIVEN,
    timeout=NOT_GIVEN,
)
print(completion.choices[0].message.content, completion.choices[0].finish_reason)
print(bool(NOT_GIVEN), bool(omit), repr(NOT_GIVEN))
