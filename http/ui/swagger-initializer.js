// Starts Swagger UI on the platform's OpenAPI document. Kept out of
// index.html so the page works under a Content-Security-Policy that forbids
// inline scripts.
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/v2/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: "StandaloneLayout",
  });
});
