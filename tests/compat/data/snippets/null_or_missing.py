# README "How to tell whether `None` means `null` or missing".
from openai import OpenAI

client = OpenAI()
response = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Hi"}])
for name in ("refusal", "audio", "service_tier", "system_fingerprint"):
    owner = response.choices[0].message if name in ("refusal", "audio") else response
    if getattr(owner, name) is None:
        if name not in owner.model_fields_set:
            print(f'{name}: Got json like {{}}, without a "{name}" key present at all.')
        else:
            print(f'{name}: Got json like {{"{name}": null}}.')
