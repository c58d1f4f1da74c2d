//! Ingest under backpressure.

#[tokio::test]
async fn backpressure_drops_nothing_below_1024() {
    tokio::time::pause();
}
