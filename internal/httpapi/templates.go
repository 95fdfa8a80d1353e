package httpapi

import (
	"time"

	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/fieldtype"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/templates"
)

// Templates: GET /templates, GET /templates/{id} (templates:read, any role),
// POST /templates and PUT /templates/{id} (templates:write, admins only);
// authorize.go enforces both.

// ListTemplates is GET /templates: every version, with fields, in a constant
// number of queries.
func (h *Handlers) ListTemplates(ctx context.Context, req apiserver.ListTemplatesRequestObject) (apiserver.ListTemplatesResponseObject, error) {
	p, err := page.New(req.Params.Page, req.Params.Limit)
	if err != nil {
		return nil, err
	}
	list, total, err := h.svc.Templates.List(ctx, templates.Filter{UpdatedSince: req.Params.UpdatedSince}, p)
	if err != nil {
		return nil, err
	}
	out := apiserver.ListTemplates200JSONResponse{Data: make([]models.Template, len(list)), Meta: pageMeta(p, total)}
	for i := range list {
		if out.Data[i], err = templateJSON(&list[i]); err != nil {
			return nil, err
		}
	}
	if since := req.Params.UpdatedSince; since != nil {
		var last *time.Time
		if n := len(list); n > 0 {
			last = &list[n-1].UpdatedAt
		}
		out.Meta.NextUpdatedSince = nextSince(since, last)
	}
	return out, nil
}

// GetTemplate is GET /templates/{id}.
func (h *Handlers) GetTemplate(ctx context.Context, req apiserver.GetTemplateRequestObject) (apiserver.GetTemplateResponseObject, error) {
	t, err := h.svc.Templates.Get(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	body, err := templateJSON(t)
	if err != nil {
		return nil, err
	}
	return apiserver.GetTemplate200JSONResponse(body), nil
}

// CreateTemplate is POST /templates (admins).
func (h *Handlers) CreateTemplate(ctx context.Context, req apiserver.CreateTemplateRequestObject) (apiserver.CreateTemplateResponseObject, error) {
	in, err := templateInput(req.Body)
	if err != nil {
		return nil, err
	}
	t, err := h.svc.Templates.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	body, err := templateJSON(t)
	if err != nil {
		return nil, err
	}
	return apiserver.CreateTemplate201JSONResponse(body), nil
}

// UpdateTemplate is PUT /templates/{id} (admins): 200 when changed in place
// (or unchanged), 201 with the new version when the template is in use.
func (h *Handlers) UpdateTemplate(ctx context.Context, req apiserver.UpdateTemplateRequestObject) (apiserver.UpdateTemplateResponseObject, error) {
	in, err := templateInput(req.Body)
	if err != nil {
		return nil, err
	}
	t, created, err := h.svc.Templates.Update(ctx, req.Id, in)
	if err != nil {
		return nil, err
	}
	body, err := templateJSON(t)
	if err != nil {
		return nil, err
	}
	if created {
		return apiserver.UpdateTemplate201JSONResponse(body), nil
	}
	return apiserver.UpdateTemplate200JSONResponse(body), nil
}

// templateInput converts the request body. Options pass through JSON into
// fieldtype.Options, whose strict decoder is the one definition of them.
func templateInput(b *models.TemplateInput) (templates.Input, error) {
	in := templates.Input{Name: b.Name, Fields: make([]templates.FieldInput, len(b.Fields))}
	fe := apperr.FieldErrors{}
	for i, f := range b.Fields {
		fi := templates.FieldInput{Key: f.Key, Name: f.Name, Type: fieldtype.Type(f.Type), Source: templates.Source(f.Source)}
		if f.Options != nil {
			raw, err := json.Marshal(f.Options)
			if err != nil {
				return in, fmt.Errorf("encode options: %w", err)
			}
			var o fieldtype.Options
			if err := json.Unmarshal(raw, &o); err != nil {
				fe.Add("fields["+strconv.Itoa(i)+"].options", err.Error())
			}
			fi.Options = &o
		}
		in.Fields[i] = fi
	}
	return in, fe.Err(apperr.Invalid, "The template is invalid.")
}

func templateJSON(t *templates.Template) (models.Template, error) {
	out := models.Template{
		Id: t.ID, Name: t.Name, Version: t.Version, PreviousVersionId: t.PreviousVersionID,
		InUse: t.InUse, CreatedAt: t.CreatedAt.UTC(), UpdatedAt: t.UpdatedAt.UTC(),
		Fields: make([]models.TemplateField, len(t.Fields)),
	}
	for i := range t.Fields {
		f := &t.Fields[i]
		tf := models.TemplateField{
			Id: f.ID, Key: f.Key, Name: f.Name, Type: models.FieldType(f.Type),
			Source: models.FieldSource(f.Source), ExternalDataField: f.External(),
		}
		if f.Options != nil {
			var o models.FieldOptions
			if err := json.Unmarshal([]byte(*f.Options), &o); err != nil {
				return out, fmt.Errorf("template %d field %d: stored options: %w", t.ID, f.ID, err)
			}
			tf.Options = &o
		}
		out.Fields[i] = tf
	}
	return out, nil
}
