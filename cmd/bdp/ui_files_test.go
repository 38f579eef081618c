//go:build unix

package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/openbdp/bdp/http/ui/uitest"
)

// uiFiles uploads files into the project's space by dropping one into a
// new folder and choosing another, sees them listed with the quota's
// bars, downloads one through its presigned link and deletes the other
// after confirming; the company's space is apart.
func uiFiles(t *testing.T, e *uiEnv) {
	b := e.b
	e.goTo(t, pidHash(e.pid, "/files"))
	b.WaitJS(t, "files page", `!document.getElementById("view-files").hidden && document.getElementById("quota-files") !== null`, 10*time.Second)
	if got := e.text(t, "#files-title"); !strings.HasPrefix(got, "Files: ") {
		t.Errorf("title %q", got)
	}

	// A new folder, and a file dropped into it.
	b.Do(t, "new folder", chromedp.SendKeys(chromedp.ID("new-folder"), "reports"), chromedp.Click(chromedp.ID("new-folder-go")))
	b.WaitJS(t, "in reports", `document.querySelector("#folder-path [aria-current]").textContent === "reports"`, 5*time.Second)
	const report = "week,kWh\n1,120\n2,98\n"
	b.Do(t, "drop a file", chromedp.Evaluate[chromedp.Void](`(() => {
		const dt = new DataTransfer();
		dt.items.add(new File([`+uitest.JSString(report)+`], "energy.csv", {type: "text/csv"}));
		const drop = document.getElementById("drop");
		drop.dispatchEvent(new DragEvent("dragover", {dataTransfer: dt, bubbles: true, cancelable: true}));
		drop.dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true, cancelable: true}));
	})()`))
	b.WaitJS(t, "uploaded", `document.querySelector('#file-table tr[data-path="reports/energy.csv"]') !== null`, 10*time.Second)
	// Another one chosen with the file input, at the top level.
	local := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(local, []byte("boiler serviced"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Do(t, "top folder", chromedp.Click(chromedp.CSS(`#folder-path button`)))
	b.Do(t, "choose a file", chromedp.SetUploadFiles(chromedp.ID("file-input"), []string{local}))
	b.WaitJS(t, "chosen file uploaded", `document.querySelector('#file-table tr[data-path="notes.txt"]') !== null && document.querySelector('#file-table tr[data-folder="reports"]') !== null`, 10*time.Second)
	if got := uitest.Eval[[]float64](t, b, `[document.getElementById("quota-files").value, document.getElementById("quota-bytes").value]`); got[0] != 2 || got[1] != float64(len(report)+len("boiler serviced")) {
		t.Errorf("quota bars %v, want 2 files and their bytes", got)
	}
	b.Screenshot(t, "ui-files")

	// Download through the presigned link the API handed out.
	b.Do(t, "into reports", clickInPage(`#file-table tr[data-folder="reports"] button`))
	b.Do(t, "download", clickInPage(`#file-table tr[data-path="reports/energy.csv"] button.download`))
	b.WaitJS(t, "link", `document.querySelector('#file-table tr[data-path="reports/energy.csv"]').dataset.link`, 10*time.Second)
	link := uitest.Eval[string](t, b, `document.querySelector('#file-table tr[data-path="reports/energy.csv"]').dataset.link`)
	res, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(body) != report {
		t.Errorf("the download link answers %d %q, want the file", res.StatusCode, body)
	}

	// The same name again: the API's refusal, in its own words.
	b.Do(t, "drop it again", chromedp.Evaluate[chromedp.Void](`(() => {
		const dt = new DataTransfer();
		dt.items.add(new File(["other"], "energy.csv", {type: "text/csv"}));
		document.getElementById("drop").dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true, cancelable: true}));
	})()`))
	b.WaitJS(t, "refusal shown", `!document.getElementById("alert").hidden`, 10*time.Second)
	if got := e.text(t, "#alert"); !strings.HasPrefix(got, "The API answered: ") || !strings.Contains(got, "already exists") {
		t.Errorf("alert %q, want the API's error envelope's words", got)
	}

	// German, then delete with a confirmation.
	e.setLang(t, "de")
	if got := e.text(t, `#file-table tr[data-path="reports/energy.csv"] button.delete`); got != "Löschen" {
		t.Errorf("German delete button %q", got)
	}
	if got := e.text(t, "#quota-heading"); got != "Kontingent" {
		t.Errorf("German quota heading %q", got)
	}
	b.Do(t, "delete", clickInPage(`#file-table tr[data-path="reports/energy.csv"] button.delete`))
	b.WaitJS(t, "confirm asked", `document.activeElement && document.activeElement.classList.contains("confirm-delete")`, 5*time.Second)
	b.Do(t, "confirm", clickInPage(`button.confirm-delete`))
	b.WaitJS(t, "deleted", `document.querySelector('#file-table tr[data-path="reports/energy.csv"]') === null && document.getElementById("files-status").textContent.includes("gelöscht")`, 10*time.Second)
	e.setLang(t, "en")

	// The company's files are another space.
	b.Do(t, "company files", chromedp.Click(chromedp.ID("nav-files")))
	b.WaitJS(t, "company space", `document.getElementById("files-title").textContent === "Company files" && document.getElementById("file-table").dataset.count === "0"`, 10*time.Second)
}

// clickInPage clicks the element selector finds, in the page, where
// finding and clicking are one step: the file table is redrawn (by a
// language switch, a refresh), and a node chromedp found a moment before
// may be gone when its click comes (CI saw "Could not find node").
func clickInPage(selector string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`document.querySelector(` + strconv.Quote(selector) + `).click()`)
}
