//! The nightly backfill job.

/// How far back the job looks, from `TIDEPOOL_BACKFILL_WINDOW` (hours).
pub const WINDOW_VAR: &str = "TIDEPOOL_BACKFILL_WINDOW";
