"""Model providers: anthropic (real SDK) and scripted (offline, deterministic)."""
