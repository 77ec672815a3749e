"""Result records: the schema, building, storing, loading and flagging them."""
