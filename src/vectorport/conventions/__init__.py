"""Where RAG frameworks (LangChain, LlamaIndex, s3vectors-embed-cli) keep a chunk's text and
bookkeeping inside a store, as pure functions that backends share to read and write them."""
