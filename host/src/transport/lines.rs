//! Serving a session over any newline-delimited byte stream.

use std::sync::Arc;

use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::codec::FramedRead;

use crate::framing::LineCodec;
use crate::limits::FIXED;
use crate::session::{Handled, Outbox, Session};

/// Reads frames until end of input, hands them to `session`, writes responses
/// and notifications. Returns once every started call has answered and the
/// output is flushed.
pub async fn serve<R, W>(reader: R, mut writer: W, session: Arc<Session>, max_line_bytes: usize)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, mut rx) = mpsc::channel::<String>(FIXED.output_queue);
    let writer_task = tokio::spawn(async move {
        while let Some(mut line) = rx.recv().await {
            line.push('\n');
            if let Err(e) = writer.write_all(line.as_bytes()).await {
                tracing::warn!("output closed: {e}");
                return;
            }
            // Write what is queued before flushing, so a burst costs one flush.
            while let Ok(mut more) = rx.try_recv() {
                more.push('\n');
                if writer.write_all(more.as_bytes()).await.is_err() {
                    return;
                }
            }
            if writer.flush().await.is_err() {
                return;
            }
        }
    });
    let outbox = Outbox::new(tx.clone());
    // Messages the server sends unasked go into the same queue.
    let unsolicited = {
        let (tx, mut stream) = (tx.clone(), Box::pin(session.unsolicited()));
        tokio::spawn(async move {
            while let Some(line) = stream.next().await {
                if tx.send(line).await.is_err() {
                    return;
                }
            }
        })
    };
    let pending = Arc::new(Semaphore::new(FIXED.pending_calls));
    let mut frames = FramedRead::new(reader, LineCodec::new(max_line_bytes));
    while let Some(frame) = frames.next().await {
        let frame = match frame {
            Ok(frame) => frame,
            Err(e) => {
                tracing::warn!("input failed: {e}");
                break;
            }
        };
        match session.handle(frame, &outbox, None) {
            Handled::Now(None) => {}
            Handled::Now(Some(reply)) => {
                if tx.send(reply.line).await.is_err() {
                    break;
                }
            }
            Handled::Later(call) => {
                let permit = Arc::clone(&pending).acquire_owned().await.expect("semaphore never closes");
                let tx = tx.clone();
                tokio::spawn(async move {
                    if let Some(reply) = call.await {
                        let _ = tx.send(reply.line).await;
                    }
                    drop(permit);
                });
            }
        }
    }
    // Listen streams end with their result; calls go on to their answers.
    session.end_of_input();
    unsolicited.abort();
    let _ = unsolicited.await;
    drop(tx);
    drop(outbox);
    let _ = writer_task.await;
}
