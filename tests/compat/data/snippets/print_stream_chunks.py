# README "Streaming responses", printing each event (chat completions: its chunks, less their ids and times).
from openai import OpenAI

client = OpenAI()
stream = client.chat.completions.create(
    model="gpt-4o",
    messages=[{"role": "user", "content": "Write a one-sentence bedtime story about a unicorn."}],
    stream=True,
    stream_options={"include_usage": True},
)
for event in stream:
    print(event.choices, event.usage, event.object)
