//! The domain types shared by ingest and the API.
