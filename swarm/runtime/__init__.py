"""LeadPump side: spawn, status, shutdown (and later permissions, `up` files)."""
