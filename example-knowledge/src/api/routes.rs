//! The public HTTP API (v2): routes and their handlers.

use axum::{Router, routing::get};

/// An error a handler returns: the status and a message for the client.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("not found")]
    NotFound,
    #[error("bad cursor")]
    BadCursor,
}

/// Returns the router of every v2 endpoint.
pub fn router() -> Router {
    Router::new()
        .route("/v2/buoys", get(list_buoys))
        .route("/v2/buoys/:id/readings", get(list_readings))
}

/// Lists the buoys, a page at a time (opaque cursor).
async fn list_buoys() -> Result<String, ApiError> {
    Ok(String::new())
}

async fn list_readings() -> Result<String, ApiError> {
    Ok(String::new())
}
