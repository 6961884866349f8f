# README "Configuring the HTTP client" (a local transport in place of the example proxy).
import httpx2
from openai import DefaultHttpx2Client, OpenAI

client = OpenAI(http_client=DefaultHttpx2Client(transport=httpx2.HTTPTransport(local_address="127.0.0.1")))
print(client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Custom client"}])
      .choices[0].message.content)
print(client.with_options(http_client=DefaultHttpx2Client()).models.retrieve("gpt-4.1").id)
