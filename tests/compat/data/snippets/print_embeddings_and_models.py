# Printing an embeddings response and a model, as openai-python shows them.
from openai import OpenAI

client = OpenAI()
response = client.embeddings.create(model="text-embedding-3-small", input="The food was delicious", dimensions=4)
print(response.usage, response.data[0].index, response.data[0].object, len(response.data[0].embedding))
print(client.models.retrieve("gpt-4.1"))
