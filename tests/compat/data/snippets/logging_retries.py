# README "Logging": the SDK's logger at INFO logs each retry (here to stdout, through a handler of its own).
import logging
import sys

import openai
from openai import OpenAI

handler = logging.StreamHandler(sys.stdout)
handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
logger = logging.getLogger(openai.__name__)
previous = logger.level
logger.addHandler(handler)
logger.setLevel(logging.INFO)
try:
    client = OpenAI()
    completion = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Retry me"}])
    print(completion.choices[0].message.content)
finally:
    logger.removeHandler(handler)
    logger.setLevel(previous)
