# README "Undocumented endpoints" (an endpoint the test server has) and "Undocumented request params".
import httpx2
from openai import OpenAI

client = OpenAI()
response = client.post("/chat/completions", cast_to=httpx2.Response,
                       body={"model": "gpt-4o", "messages": [{"role": "user", "content": "Raw"}]})
print(response.status_code, response.headers.get("content-type"), response.json()["choices"][0]["message"]["content"])
completion = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Extra"}],
                                            extra_body={"top_k": 3}, extra_headers={"x-extra": "1"},
                                            extra_query={"debug": "1"})
print(completion.choices[0].message.content)
