package http

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/fault"
)

// tokenForm is the OAuth2 password grant (RFC 6749 4.3); Basic
// credentials in the Authorization header work as well.
type tokenForm struct {
	GrantType string `json:"grant_type" doc:"password"`
	Username  string `json:"username" doc:"the user's email"`
	Password  string `json:"password"`
}

type tokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type" doc:"bearer"`
	ExpiresIn   int64  `json:"expires_in" doc:"seconds"`
}

func (s *Server) issueToken(c *fiber.Ctx, _ *call) (any, error) {
	email, password, err := tokenCredentials(c)
	if err != nil {
		return nil, err
	}
	userID, err := s.verifyPassword(c.UserContext(), email, password, clientAddr(c))
	if err != nil {
		return nil, err
	}
	p, _, err := s.authz.get(c.UserContext(), userID)
	if fault.Is(err, fault.NotFound) {
		return nil, fault.Unauthenticatedf("wrong email or password")
	}
	if err != nil {
		return nil, err
	}
	tok, err := s.tokens.Issue(userID, p.User.PasswordHash)
	if err != nil {
		return nil, err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return tokenResponse{AccessToken: tok, TokenType: "bearer", ExpiresIn: int64(s.tokens.TTL().Seconds())}, nil
}

// tokenCredentials takes email and password from Basic credentials or
// from the password-grant form.
func tokenCredentials(c *fiber.Ctx) (string, string, error) {
	if h := c.Get(fiber.HeaderAuthorization); h != "" {
		scheme, cred, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Basic") {
			return "", "", fault.Unauthenticatedf("a token is issued for Basic credentials or the password grant")
		}
		email, password, ok := parseBasic(strings.TrimSpace(cred))
		if !ok {
			return "", "", fault.Unauthenticatedf("malformed Basic credentials")
		}
		return email, password, nil
	}
	if strings.HasPrefix(c.Get(fiber.HeaderContentType), fiber.MIMEApplicationForm) {
		if gt := c.FormValue("grant_type"); gt != "password" {
			return "", "", fault.Invalidf("grant_type must be password, got %q", gt)
		}
		email, password := c.FormValue("username"), c.FormValue("password")
		if email == "" || password == "" {
			return "", "", fault.Unauthenticatedf("username and password are required")
		}
		return email, password, nil
	}
	return "", "", fault.Unauthenticatedf("credentials required")
}
