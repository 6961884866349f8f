# README "Managing HTTP resources".
import asyncio

from openai import AsyncOpenAI, OpenAI

with OpenAI() as client:
    print(client.models.retrieve("gpt-4o").id, client.is_closed())
print(client.is_closed())


async def main() -> None:
    async with AsyncOpenAI() as client:
        completion = await client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "Say this is a test"}])
        print(completion.choices[0].message.content)


asyncio.run(main())
