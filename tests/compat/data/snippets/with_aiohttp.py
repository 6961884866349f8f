# README "With aiohttp" (chat completions in place of the Responses call).
import asyncio

from openai import AsyncOpenAI, DefaultAioHttpClient


async def main() -> None:
    async with AsyncOpenAI(http_client=DefaultAioHttpClient()) as client:
        completion = await client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "Say this is a test"}])
        print(completion.choices[0].message.content)


asyncio.run(main())
