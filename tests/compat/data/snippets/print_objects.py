# README "Using types": responses are pydantic models; print them, to_dict(), to_json().
from openai import OpenAI

client = OpenAI()
completion = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Say hi"}])
print(completion.usage)
print(completion.choices[0].message)
print(repr(completion.choices[0]))
print(completion.usage.to_dict() if completion.usage else None)
print(completion.choices[0].message.to_json())
print(list(completion.to_dict()))
