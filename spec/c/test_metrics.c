/* The metrics endpoint's request parser (exec/wm_metrics_http.h, issue 34 item 12): what
 * each request is answered, decided as soon as the bytes allow. */
#include "exec/wm_metrics_http.h"
#include "test.h"

static wm_metrics_req parse(const char *r) { return wm_metrics_parse_request(r, strlen(r), 8191); }

void test_metrics(void) {
  /* well-formed: GET and HEAD of /metrics (a query string allowed), CRLF or LF */
  CHECK_I64(parse("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), WM_MREQ_GET);
  CHECK_I64(parse("GET /metrics?x=1 HTTP/1.0\n\n"), WM_MREQ_GET);
  CHECK_I64(parse("HEAD /metrics HTTP/1.1\r\n\r\n"), WM_MREQ_HEAD);
  CHECK_I64(parse("GET / HTTP/1.1\r\n\r\n"), WM_MREQ_NOT_FOUND);
  CHECK_I64(parse("GET /metricsx HTTP/1.1\r\n\r\n"), WM_MREQ_NOT_FOUND);
  CHECK_I64(parse("POST /metrics HTTP/1.1\r\n\r\n"), WM_MREQ_METHOD);
  /* incomplete: wait for more */
  CHECK_I64(parse(""), WM_MREQ_MORE);
  CHECK_I64(parse("GET /metr"), WM_MREQ_MORE);
  CHECK_I64(parse("GET /metrics HTTP/1.1\r\nHost: x\r\n"), WM_MREQ_MORE);
  CHECK_I64(parse("GET /metrics HTTP/1.1\r\n\r"), WM_MREQ_MORE);
  /* not HTTP: 400, at once */
  CHECK_I64(parse("HEADX /metrics HTTP/1.1\r\n\r\n"), WM_MREQ_METHOD); /* a token: another method */
  CHECK_I64(parse("HEADX\r\n\r\n"), WM_MREQ_BAD);
  CHECK_I64(parse("HEAD/metrics HTTP/1.1\r\n"), WM_MREQ_BAD);
  CHECK_I64(parse("GET /metrics\r\n\r\n"), WM_MREQ_BAD);              /* no version */
  CHECK_I64(parse("GET  /metrics HTTP/1.1\r\n"), WM_MREQ_BAD);        /* two spaces */
  CHECK_I64(parse("GET /metrics HTTP/1.1 x\r\n"), WM_MREQ_BAD);
  CHECK_I64(parse("GET /metrics HTTP/x.1\r\n"), WM_MREQ_BAD);
  CHECK_I64(parse("G\xc3\xa9T /metrics HTTP/1.1\r\n"), WM_MREQ_BAD);  /* not a token */
  CHECK_I64(parse("GET /metrics HTTP/1.1\r\nA: \x01\r\n"), WM_MREQ_BAD);
  CHECK_I64(wm_metrics_parse_request("GET /metrics\0", 13, 8191), WM_MREQ_BAD); /* a NUL byte */
  CHECK_I64(wm_metrics_parse_request("\0", 1, 8191), WM_MREQ_BAD);
  CHECK_I64(wm_metrics_parse_request("GET /metrics HTTP/1.1\r\n\0\r\n\r\n", 27, 8191), WM_MREQ_BAD);
  /* too large: max bytes and not complete */
  char big[64];
  memset(big, 'a', sizeof big);
  memcpy(big, "GET /", 5);
  CHECK_I64(wm_metrics_parse_request(big, sizeof big, 64), WM_MREQ_TOO_LARGE);
  CHECK_I64(wm_metrics_parse_request(big, sizeof big, 65), WM_MREQ_MORE);
  const char *hdr = "GET /metrics HTTP/1.1\r\nHost: xxxxxxxxxx\r\n";
  CHECK_I64(wm_metrics_parse_request(hdr, strlen(hdr), strlen(hdr)), WM_MREQ_TOO_LARGE);
}
