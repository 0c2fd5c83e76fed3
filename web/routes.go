package web

import (
	"github.com/labstack/echo/v5"

	"unhold/static"
)

// routes lists every route of the server.
func (s *server) routes(e *echo.Echo) {
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.StaticFS("/static", static.FS)

	// Dashboard pages.
	e.GET("/", s.overview)
	e.GET("/lang", s.setLang)
	e.GET("/orders", s.ordersList)
	e.GET("/orders/:order_no", s.orderChain)
	e.GET("/orders/:order_no/resources/:type/rerun", s.rerunPreview)
	e.POST("/orders/:order_no/resources/:type/rerun", s.rerunSubmit)
	e.GET("/tasks", s.tasksList)
	e.GET("/tasks/rerun", s.bulkRerunPreview)
	e.POST("/tasks/rerun", s.bulkRerunSubmit)
	e.GET("/tasks/:id", s.taskDetail)
	e.GET("/inventory", s.inventoryList)
	e.GET("/inventory/:sku_id", s.skuLedger)
	e.GET("/coupons", s.couponLedger)
	e.GET("/balances", s.balanceLedger)
	e.GET("/reports/daily", s.dailyReport)
	e.GET("/reports/daily.csv", s.dailyReportCSV)
	e.GET("/recon", s.reconPage)
	e.POST("/recon/run", s.reconRunNow)
	e.GET("/recon/diffs/:id", s.reconDiff)
	e.POST("/recon/diffs/:id/ack", s.reconAck)
	e.POST("/recon/diffs/:id/resolve", s.reconResolve)
	e.GET("/jobs", s.jobsPage)
	e.POST("/jobs/:name/run", s.jobRunNow)
	e.GET("/metrics", s.metricsHandler)

	// JSON API.
	api := e.Group("/api/v1")

	api.PUT("/skus/:sku_id", s.putSKU)
	api.GET("/skus/:sku_id", s.getSKU)

	api.POST("/coupons", s.createCoupon)
	api.GET("/coupons/:coupon_id", s.getCoupon)

	api.POST("/accounts/:uid/credit", s.creditAccount)
	api.GET("/accounts/:uid", s.getAccount)

	api.PUT("/activities/:activity_id", s.putActivity)
	api.GET("/activities/:activity_id", s.getActivity)

	api.PUT("/slots/:slot_id", s.putSlot)
	api.GET("/slots/:slot_id", s.getSlot)

	api.POST("/orders", s.placeOrder)
	api.GET("/orders/:order_no", s.getOrder)
	api.POST("/orders/:order_no/pay", s.payOrder)
	api.POST("/orders/:order_no/close", s.closeOrder)
	api.POST("/orders/:order_no/resources/:type/rerun", s.rerun)
	api.POST("/reconcile", s.apiReconcile)
}
