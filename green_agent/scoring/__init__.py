"""From a finished conversation to verdicts: one trial's score and signals (`score`), what went wrong in a
failed trial (`failures`, `diagnosis`), the assessment's metrics (`metrics`) and error bars (`uncertainty`).
Imports core and llm (the judge)."""
