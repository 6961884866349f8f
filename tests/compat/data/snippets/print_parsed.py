# helpers.md "Structured outputs parsing helpers": the parsed completion, printed.
from openai import OpenAI
from pydantic import BaseModel


class City(BaseModel):
    name: str
    population: int


client = OpenAI()
completion = client.chat.completions.parse(
    model="gpt-4o", messages=[{"role": "user", "content": "Name a city"}], response_format=City)
print(completion.choices[0])
print(completion.choices[0].message.parsed)
print(completion.choices[0].message.parsed.population if completion.choices[0].message.parsed else None)
