// Package tokenizer reads a Hugging Face tokenizer.json and counts prompt
// tokens exactly as the served model's tokenizer does, in pure Go, so the
// bench client can build prompts of an exact token length. It owns the
// byte-level BPE model, the normalizers and pre-tokenizers those models use,
// the post-processor's special-token count, and finding the file locally.
// Counter is the one interface its callers take.
package tokenizer
