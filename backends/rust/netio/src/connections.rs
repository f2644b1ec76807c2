//! Connections opened, counted as the reference's client counts them
//! (`Counters.connections`): each connect that succeeded, through a proxy too.
//! A layer on reqwest's connector, for the HTTP reader and the S3 client alike.

use std::error::Error;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower_layer::Layer;
use tower_service::Service;

use crate::Counters;

type BoxError = Box<dyn Error + Send + Sync>;

#[derive(Clone)]
pub struct CountConnects {
    pub counters: Arc<Counters>,
}

impl CountConnects {
    pub fn on(counters: &Arc<Counters>) -> CountConnects {
        CountConnects {
            counters: counters.clone(),
        }
    }
}

impl<S> Layer<S> for CountConnects {
    type Service = Counted<S>;

    fn layer(&self, inner: S) -> Counted<S> {
        Counted {
            inner,
            counters: self.counters.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Counted<S> {
    inner: S,
    counters: Arc<Counters>,
}

impl<S, R> Service<R> for Counted<S>
where
    S: Service<R, Error = BoxError>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let (connecting, counters) = (self.inner.call(request), self.counters.clone());
        Box::pin(async move {
            let result = connecting.await;
            if result.is_ok() {
                counters.connections.fetch_add(1, Ordering::Relaxed);
            }
            result
        })
    }
}
