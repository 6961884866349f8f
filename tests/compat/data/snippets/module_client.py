# openai's module-level client: configured from the environment on first use.
import openai

completion = openai.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Module level"}])
print(completion.choices[0].message.content)
print([model.id for model in openai.models.list()][:2])
openai.max_retries = 0
print(openai.embeddings.create(model="text-embedding-3-small", input="x").model)
